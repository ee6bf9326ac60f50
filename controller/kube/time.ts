/** The API's two time formats: Time (whole seconds) and MicroTime (six fractional digits, as Leases and Events require). */

/** RFC 3339 with exactly six fractional digits; the API server refuses any other width for MicroTime. */
export function microTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-01-02T03:04:05.678Z
  return `${iso.slice(0, 23)}000Z`;
}

/** RFC 3339 in whole seconds, as metav1.Time is written. */
export function time(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}
