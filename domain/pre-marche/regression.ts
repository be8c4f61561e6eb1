/**
 * The statistics of the pre-market model, pure and small: an L2-regularised logistic regression fitted by Newton's
 * method (iteratively reweighted least squares), the area under the ROC curve, and the tolerance of a band's observed
 * rate. No dependency: fifteen binary signals and an intercept are a 16×16 system per iteration.
 */

export interface Ajustement {
  intercept: number;
  coefficients: number[];
  /** Standard errors from the inverse of the penalised Hessian (intercept first, then each coefficient). */
  erreurs: number[];
  iterations: number;
}

/** Solves A x = b for a symmetric positive-definite A (Cholesky); also returns A⁻¹'s diagonal. */
function resoudre(a: number[][], b: number[]): { x: number[]; diagInverse: number[] } {
  const n = b.length;
  const l = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = a[i][j];
      for (let k = 0; k < j; k++) s -= l[i][k] * l[j][k];
      l[i][j] = i === j ? Math.sqrt(Math.max(s, 1e-12)) : s / l[j][j];
    }
  }
  const avant = (v: number[]) => {
    const y = new Array<number>(n).fill(0);
    for (let i = 0; i < n; i++) {
      let s = v[i];
      for (let k = 0; k < i; k++) s -= l[i][k] * y[k];
      y[i] = s / l[i][i];
    }
    const x = new Array<number>(n).fill(0);
    for (let i = n - 1; i >= 0; i--) {
      let s = y[i];
      for (let k = i + 1; k < n; k++) s -= l[k][i] * x[k];
      x[i] = s / l[i][i];
    }
    return x;
  };
  const diagInverse = Array.from({ length: n }, (_, i) => {
    const e = new Array<number>(n).fill(0);
    e[i] = 1;
    return avant(e)[i];
  });
  return { x: avant(b), diagInverse };
}

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/**
 * Fits P(y = 1 | x) = sigmoid(b0 + Σ bj xj) by maximising the log-likelihood minus lambda/2 Σ bj² (the intercept is
 * not penalised). `x` is row-major: n rows of k values (0/1 signals here). Rows may carry a weight.
 */
export function ajusterLogistique(
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  k: number,
  {
    lambda = 1,
    iterationsMax = 25,
    tolerance = 1e-8,
  }: { lambda?: number; iterationsMax?: number; tolerance?: number } = {},
): Ajustement {
  const n = y.length;
  const d = k + 1;
  let beta = new Array<number>(d).fill(0);
  // Starting at the base rate: Newton then converges in a handful of steps.
  let positifs = 0;
  for (let i = 0; i < n; i++) positifs += y[i];
  const p0 = Math.min(Math.max(positifs / Math.max(n, 1), 1e-4), 1 - 1e-4);
  beta[0] = Math.log(p0 / (1 - p0));
  let iterations = 0;
  let diagInverse = new Array<number>(d).fill(0);
  for (; iterations < iterationsMax; iterations++) {
    const h = Array.from({ length: d }, () => new Array<number>(d).fill(0));
    const g = new Array<number>(d).fill(0);
    const ligne = new Array<number>(d);
    for (let i = 0; i < n; i++) {
      ligne[0] = 1;
      let z = beta[0];
      for (let j = 0; j < k; j++) {
        const v = x[i * k + j];
        ligne[j + 1] = v;
        z += beta[j + 1] * v;
      }
      const p = sigmoid(z);
      const w = p * (1 - p);
      const r = y[i] - p;
      for (let a = 0; a < d; a++) {
        const va = ligne[a];
        if (va === 0) continue;
        g[a] += va * r;
        for (let b = 0; b <= a; b++) if (ligne[b] !== 0) h[a][b] += w * va * ligne[b];
      }
    }
    for (let a = 0; a < d; a++) for (let b = 0; b < a; b++) h[b][a] = h[a][b];
    for (let j = 1; j < d; j++) {
      h[j][j] += lambda;
      g[j] -= lambda * beta[j];
    }
    const { x: pas, diagInverse: di } = resoudre(h, g);
    diagInverse = di;
    beta = beta.map((b, j) => b + pas[j]);
    if (Math.max(...pas.map(Math.abs)) < tolerance) {
      iterations++;
      break;
    }
  }
  return {
    intercept: beta[0],
    coefficients: beta.slice(1),
    erreurs: diagInverse.map((v) => Math.sqrt(Math.max(v, 0))),
    iterations,
  };
}

/** The model's probability for a row of signals. */
export function probabilite(a: Pick<Ajustement, 'intercept' | 'coefficients'>, signaux: ArrayLike<number>): number {
  let z = a.intercept;
  for (let j = 0; j < a.coefficients.length; j++) z += a.coefficients[j] * signaux[j];
  return sigmoid(z);
}

/** Area under the ROC curve (ties counted half): the chance a sold example ranks above an unsold one. */
export function aire(scores: number[], y: ArrayLike<number>): number | null {
  const ordre = scores.map((s, i) => i).sort((a, b) => scores[a] - scores[b]);
  let rang = 0;
  let sommeRangs = 0;
  let positifs = 0;
  for (let i = 0; i < ordre.length;) {
    let j = i;
    while (j < ordre.length && scores[ordre[j]] === scores[ordre[i]]) j++;
    const moyen = (rang + 1 + rang + (j - i)) / 2;
    for (let t = i; t < j; t++) {
      if (y[ordre[t]] === 1) {
        sommeRangs += moyen;
        positifs++;
      }
    }
    rang += j - i;
    i = j;
  }
  const negatifs = ordre.length - positifs;
  if (positifs === 0 || negatifs === 0) return null;
  return (sommeRangs - (positifs * (positifs + 1)) / 2) / (positifs * negatifs);
}

/** Points of percentage added to the binomial margin: the band tolerance's floor (the prediction's own error). */
export const TOLERANCE_PLANCHER_PCT = 3;
/**
 * Standard errors of the binomial margin: 2.58, the two-sided 99 % quantile, so that five bands checked together are
 * all inside at a 95 % level when the model is right (Bonferroni).
 */
export const TOLERANCE_Z = 2.58;

/**
 * The tolerance of a band: how far its observed rate may stand from the model's mean prediction before the band is
 * called miscalibrated. TOLERANCE_Z binomial standard errors of a rate over `n` examples at the predicted rate, plus
 * TOLERANCE_PLANCHER_PCT points, in percentage points.
 */
export function tolerancePct(predit: number, n: number): number {
  const p = Math.min(Math.max(predit, 0.01), 0.99);
  return Math.round((100 * TOLERANCE_Z * Math.sqrt((p * (1 - p)) / Math.max(n, 1)) + TOLERANCE_PLANCHER_PCT) * 10) / 10;
}
