// Kubernetes resource quantities, for the sizes of volumes. Hand-written on
// purpose: it must read exactly what Kubernetes writes (binary and decimal
// suffixes, decimals), and no library in our tree parses quantities.

/** "20Gi" → 20; other units converted; undefined when it is not a quantity. */
export function gigabytes(quantity: string | undefined): number | undefined {
  const m = quantity === undefined ? null : /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity);
  if (!m) return undefined;
  const factor: Record<string, number> = {
    Ki: 2 ** -20,
    Mi: 2 ** -10,
    Gi: 1,
    Ti: 2 ** 10,
    k: 1e3 / 2 ** 30,
    M: 1e6 / 2 ** 30,
    G: 1e9 / 2 ** 30,
    T: 1e12 / 2 ** 30,
  };
  return Number(m[1]) * (m[2] ? factor[m[2]]! : 1 / 2 ** 30);
}

/** Whole GiB of a quantity (a volume's "40Gi"), rounded down: what a volume surely has. */
export function wholeGigabytes(quantity: string | undefined): number | undefined {
  const gb = gigabytes(quantity);
  return gb === undefined ? undefined : Math.floor(gb);
}
