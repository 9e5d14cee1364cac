/** The upstream path: the base URL's path with `suffix` appended (a base URL of "https://host" has the path "/"). */
export function joinPath(baseUrl: URL, suffix: string): string {
  const path = baseUrl.pathname;
  return (path.endsWith('/') ? path.slice(0, -1) : path) + suffix;
}
