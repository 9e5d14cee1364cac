/** The part of the `bcrypt` package's API that passwords.ts uses (the package ships no types). */
declare module 'bcrypt' {
  /** A salt "$2b$<cost>$<22 chars>", from 16 bytes of crypto.randomBytes. */
  export function genSaltSync(rounds: number, minor?: 'a' | 'b'): string;
  /** bcrypt(data) under an encoded salt, on the libuv thread pool. */
  export function hash(data: string | Buffer, salt: string): Promise<string>;
  /** Whether `data` matches `encrypted`; rejects on a malformed hash. */
  export function compare(data: string | Buffer, encrypted: string): Promise<boolean>;
}
