/**
 * Normalises an email address (trimmed, NFC, lower-cased) and validates it.
 * Internationalised addresses (RFC 6531) are accepted; whitespace, control
 * characters, quoted local parts and IP-literal domains are not.
 * Returns the normalised address, or null when it is not acceptable.
 */
export function normalizeEmail(input: string): string | null {
  const email = input.trim().normalize('NFC').toLowerCase();
  if (email.length > 254) return null;
  const at = email.lastIndexOf('@');
  if (at < 1 || at !== email.indexOf('@')) return null;
  const local = email.slice(0, at);
  const domain = email.slice(at + 1);
  if (local.length > 64 || !LOCAL.test(local) || local.startsWith('.') || local.endsWith('.') || local.includes('..')) {
    return null;
  }
  const labels = domain.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return null;
  if (!/^\p{L}{2,}$/u.test(labels.at(-1)!) && !/^xn--[a-z0-9-]+$/.test(labels.at(-1)!)) return null;
  return email;
}

// Letters and digits of any script, and the RFC 5322 atext symbols.
const LOCAL = /^[\p{L}\p{M}\p{N}!#$%&'*+/=?^_`{|}~.-]+$/u;
const LABEL = /^(?!-)[\p{L}\p{M}\p{N}-]{1,63}(?<!-)$/u;
