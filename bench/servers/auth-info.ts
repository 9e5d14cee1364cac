/** What bench/servers/auth-server.ts prints once it listens. */
export interface AuthInfo {
  url: string;
  apiKey: string;
  email: string;
  password: string;
}
