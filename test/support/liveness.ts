/**
 * How long a test waits for something that must happen before it calls it a hang. Tens of
 * seconds, so a busy machine never fails a test that is only slow: a test asserts behaviour,
 * never speed (speed is `npm run bench`). A test that waits this long gets twice as long in all.
 */
export const LIVENESS_MS = 60_000;
