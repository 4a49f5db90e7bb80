// Fixture of test/architecture.test.ts: an adapter (I/O).
export const readIt = (file: string): string => file;
