/**
 * A short label for a session's device, from its User-Agent: "Firefox on
 * Linux", "Safari on iPhone", "curl". Only for people to recognise their
 * devices in a list: a User-Agent is whatever the client sent, so the label
 * decides nothing. Hand-written over the common families, in the order that
 * matters: most browsers claim to be others too (Edge and Opera say Chrome,
 * Chrome says Safari, Android says Linux, iOS says "like Mac OS X").
 */

/** Browsers and programs, first match wins: each pattern names the family's own token. */
const BROWSERS: readonly [RegExp, string][] = [
  [/\bEdg(?:e|A|iOS)?\//, 'Edge'],
  [/\b(?:OPR|Opera)\//, 'Opera'],
  [/\bSamsungBrowser\//, 'Samsung Internet'],
  [/\bVivaldi\//, 'Vivaldi'],
  [/\bYaBrowser\//, 'Yandex Browser'],
  [/\b(?:Firefox|FxiOS)\//, 'Firefox'],
  [/\bCriOS\//, 'Chrome'],
  [/\bChromium\//, 'Chromium'],
  [/\b(?:Headless)?Chrome\//, 'Chrome'],
  [/\bVersion\/[\d.]+.*\bSafari\//, 'Safari'],
  [/\bMSIE |\bTrident\//, 'Internet Explorer'],
  [/^curl\//, 'curl'],
  [/^Wget\//, 'Wget'],
  [/^python-requests\/|^Python-urllib\/|^python-httpx\//, 'Python'],
  [/^okhttp\//, 'OkHttp'],
  [/^Go-http-client\//, 'Go'],
  [/^PostmanRuntime\//, 'Postman'],
];

/** Operating systems, first match wins. */
const SYSTEMS: readonly [RegExp, string][] = [
  [/\biPhone\b/, 'iPhone'],
  [/\biPad\b/, 'iPad'],
  [/\biPod\b/, 'iPod'],
  [/\bAndroid\b/, 'Android'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bWindows\b/, 'Windows'],
  [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
  [/\bLinux\b|\bX11\b/, 'Linux'],
];

function firstMatch(text: string, table: readonly [RegExp, string][]): string | undefined {
  for (const [pattern, name] of table) if (pattern.test(text)) return name;
  return undefined;
}

/** At most this much of a User-Agent is read: it is stored cut to 512 characters anyway. */
const READ_MAX = 512;

/** "Browser on OS", the browser or the OS alone, or "Unknown device". */
export function deviceLabel(userAgent: string | null | undefined): string {
  const text = (userAgent ?? '').slice(0, READ_MAX);
  const browser = firstMatch(text, BROWSERS);
  const system = firstMatch(text, SYSTEMS);
  if (browser && system) return `${browser} on ${system}`;
  if (browser) return browser;
  if (system) return `Browser on ${system}`;
  return 'Unknown device';
}
