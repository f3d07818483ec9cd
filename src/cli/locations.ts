/** Locations as the commands show them: main (every catalogue's, where a one-place store keeps all) first, then by name. */
export const mainFirst = (names: string[]): string[] => [...names.filter((n) => n === 'main'), ...names.filter((n) => n !== 'main').sort()]
