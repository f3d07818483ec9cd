/**
 * The store with some methods replaced (a storage failure, a hang), every other one called on the
 * store itself: an `Object.create(store)` stand-in would keep the state a method sets on `this`
 * (the SQLite store's open read snapshot) to itself, out of the store's sight.
 */
export function overriding<T extends object> (store: T, overrides: Record<string, unknown>): T {
  return new Proxy(store, {
    get (target, property) {
      if (Object.hasOwn(overrides, property)) return overrides[property as string]
      const value = Reflect.get(target, property, target) as unknown
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    }
  })
}
