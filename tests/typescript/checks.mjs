// The checks the TypeScript client scripts share: one "ok: ..." line per check; on the
// first failure, "FAIL: ..." (with what was seen) on stderr and exit 1.

export function fail(what, seen) {
  console.error(`FAIL: ${what}${seen === undefined ? "" : `\n  seen: ${JSON.stringify(seen)}`}`);
  process.exit(1);
}

export function check(condition, what, seen) {
  if (!condition) fail(what, seen);
  console.log(`ok: ${what}`);
}
