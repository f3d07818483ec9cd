import neostandard from 'neostandard'

export default [
  ...neostandard({
    ts: true,
    ignores: ['dist/**', 'node_modules/**', '.scratch/**', 'test-output/**', 'bench/results/**', '**/*.d.ts', 'src/client/generated/**']
  }),
  // `void promise` marks a deliberately floating promise (event handlers, timers).
  {
    rules: {
      'no-void': ['error', { allowAsStatement: true }],
      // A TypeBox schema and its Static type share one name on purpose.
      '@typescript-eslint/no-redeclare': 'off',
      // Flags changed by callbacks (close, kill) end these loops; the rule cannot see that.
      'no-unmodified-loop-condition': 'off'
    }
  }
]
