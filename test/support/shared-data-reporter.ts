import type { Reporter, TestModule } from 'vitest/node';

/** The mark every test that needs `../shared` carries in its name when what it reads is absent (e.g. `../shared/data/dvf absent`). */
export const ABSENT = /\.\.\/shared\/[^\s)\]]* absent/;

/**
 * Says, as the run's last words, how many tests skipped because `../shared` (the real public samples and the
 * specification) is not beside the checkout: a clone alone passes, and nobody should take that for a full run.
 */
export default class SharedDataReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const missing = new Set<string>();
    let skipped = 0;
    for (const module of testModules) {
      for (const test of module.children.allTests('skipped')) {
        const mark = test.fullName.match(ABSENT);
        if (!mark) continue;
        skipped++;
        missing.add(mark[0].replace(/ absent$/, ''));
      }
    }
    if (skipped === 0) return;
    console.log(
      `\n${skipped} tests ignorés faute de ${[...missing].sort().join(', ')} (les données publiques réelles et la spécification, à placer à côté du projet : voir README, « Tests and CI »).`,
    );
  }
}
