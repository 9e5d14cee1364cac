import type { Tier } from '../catalog/models.ts';
import { hasIndentedCodeLine, hasInlineMath, hasSelectFrom, nextCallSite } from './classifier-scans.ts';
import type { PromptShape } from './prompt-shape.ts';

/**
 * How hard a request is, from its content alone: no model call, word lists
 * (regular expressions that never backtrack further than a word) and a few
 * single-pass scans (classifier-scans.ts) over bounded slices of the text,
 * so it costs microseconds on any prompt and at most about a millisecond on
 * the longest slices (bench/benchmarks/gateway-routing.ts and
 * gateway-hostile.ts measure it). Each signal adds points; the sum picks the tier:
 *
 * | signal     | points | what it looks for                                               |
 * |------------|--------|-----------------------------------------------------------------|
 * | code       | 1 or 2 | code words (2 for two or more); 2 for a fenced block or "write/implement a program" |
 * | math       | 1 or 2 | maths words (2 for two or more); 2 for LaTeX, proofs, derivations |
 * | reasoning  | 1 or 2 | design, trade-offs, root cause, analysis (2 for two or more)     |
 * | ask        | 1      | an instruction of 20 words or more, outside short-answer genres  |
 * | tools      | 1 to 3 | tools offered (1), many of them (+1), an agent loop in progress (+1) |
 * | structured | 1 or 2 | a JSON schema to follow (2 when it is large); json_object is free |
 * | long       | 1 to 3 | over 1.5k, 6k, 20k characters of prompt                            |
 * | deep       | 1 or 2 | six or more messages, twelve or more                              |
 * | effort     | 1 or 2 | reasoning_effort medium or high                                   |
 *
 * Tier 1 below 2 points, tier 2 from 2, tier 3 from 5. The thresholds were
 * set on general grounds and then checked on bench/data/routing-labelled.jsonl
 * (test/gateway/pipeline/routing-classifier.test.ts states the accuracy).
 */
export interface Difficulty {
  tier: Tier;
  score: number;
  /** The signals that scored, in the table's order (for X-Gateway-Route-Reason). */
  signals: string[];
}

/** Short-answer genres: a long instruction for one of these is still an easy task. */
const EASY_GENRE =
  /\b(?:haiku|limerick|poem|tweet|slogan|joke|fun fact|title|headline|synonyms?|antonyms?|opposite|plural|past tense|spell(?:ed|ing)?|translate|proofread|grammar|rewrite|shorten|summari[sz]e|in (?:one|two|three) sentences?|briefly|birthday|thank-you|out-of-office|reply|email|message)\b/i;
/** An instruction of this many words or more, outside the easy genres, asks for something specific and involved. */
const ASK_WORDS = 20;

const TIER_2 = 2;
const TIER_3 = 5;

/** A fenced block, an indented line of code, or a pasted SQL statement (the last two: classifier-scans.ts). */
const looksLikeCode = (text: string) => text.includes('```') || hasIndentedCodeLine(text) || hasSelectFrom(text);
const CODE_TASK =
  /\b(?:implement\w*|refactor|debug|write (?:a|an|the) (?:\w+ ){0,3}(?:program|function|class|script|query|regex|regular expression|parser|crawler|algorithm|module|test|lexer|spec(?:ification)?|component|service|pipeline|terraform module|dockerfile|migration)s?)\b|\b(?:stack ?trace|exception in thread|traceback|segfault|null pointer)\b/i;
/** Code words; calls and definitions (`name(...) {`) are found by nextCallSite and counted with them. */
const CODE_WORDS =
  /\b(?:function|class|method|compile[rd]?|runtime|async|thread|mutex|pointer|recursi\w+|iterative|algorithm|regex|sql|postgres\w*|mysql|database|index(?:es)?|api endpoint|bug|typescript|javascript|python|rust|golang|java|c\+\+|kotlin|bash|docker|kubernetes|kubectl|pod|node\.js|react|terraform|vpc|subnets?|nginx|load balancer|protocol|invariants?|data structure|memoi[sz]\w*|re-?renders?|file handles?|leaks?)\b|=>|::|#include/gi;
/** Maths notation and words; inline LaTeX (`$x^2$`) is found by hasInlineMath. */
const MATH_STRONG =
  /\\(?:frac|int|sum|prod|sqrt|lim|infty|mathbb|partial)|[∫∑∏√∞≤≥≠∂]|\b[a-z]\s?\^\s?\d[^=\n]{0,40}=|\b(?:prove|proof|disprove|theorem|lemma|derive|derivation|show that|by induction|eigen\w*|integral|differential equation|lagrange)\b/i;
const MATH_WORDS =
  /\b(?:expected value|expectation|without replacement|minimi[sz]e|maximi[sz]e|equations?|solve|solutions?|probability|matrix|derivative|polynomial|congruent|modulo|prime|logarithm|variance|regression|complexity|big-o|combinatori\w*|converge[sn]?\w*|series|boolean expression|simplify|cross-validation|regulari[sz]ation|median)\b|\b[a-z]\s?\^\s?\d|\d\s*[*/^]\s*\d+\s*[+-=]/gi;
const REASONING =
  /\b(?:design|architect\w*|trade-?offs?|pros and cons|root cause|analy[sz]e|analysis|compare|contradictions?|optimi[sz]e|strategy|migration plan|recommend (?:one|an approach|which)|justify|implications|step by step|consistency|concurrency|distributed|scal(?:e|ability)|race|deadlock|contention|performance|make it fast(?:er)?|security|threat model|attacks?|vulnerab\w*|handshake|forward secrecy|periodi[sz]ation|show (?:your|the) work|why (?:does|is|do)|how do i (?:debug|fix)|walk me through|(?:root |likely )?causes?|culprits?|differ(?:s|ence|ences)?|which (?:one )?(?:to|should (?:i|we)) (?:choose|use|pick)|(?:response|project|test|training|rollout|rollback|recovery) plan|priorit\w+|critique|investigate|restructure|assumptions|determine whether|total cost of ownership)\b/gi;

/** Scores one chat request (its shape: prompt-shape.ts). Pure and allocation-light: called on every routed call. */
export function classify(shape: PromptShape): Difficulty {
  const text = shape.scanText;
  const signals: string[] = [];
  let score = 0;
  const add = (name: string, points: number) => {
    if (points <= 0) return;
    score += points;
    signals.push(name);
  };

  add('code', looksLikeCode(text) || CODE_TASK.test(text) ? 2 : distinctCodeWords(text));
  add('math', MATH_STRONG.test(text) || hasInlineMath(text) ? 2 : distinctMatches(text, MATH_WORDS));
  add('reasoning', Math.min(2, distinctMatches(text, REASONING)));
  add('tools', (shape.tools > 0 ? 1 : 0) + (shape.tools > 4 ? 1 : 0) + (shape.toolTurns > 0 ? 1 : 0));
  add('ask', shape.askWords >= ASK_WORDS && !EASY_GENRE.test(text) ? 1 : 0);
  add('structured', shape.schemaSize === 0 ? 0 : shape.schemaSize > 600 ? 2 : 1);
  add('long', shape.chars > 20_000 ? 3 : shape.chars > 6000 ? 2 : shape.chars > 1500 ? 1 : 0);
  add('deep', shape.messages >= 12 ? 2 : shape.messages >= 6 ? 1 : 0);
  add('effort', shape.effort === 'high' ? 2 : shape.effort === 'medium' ? 1 : 0);

  const tier: Tier = score >= TIER_3 ? 3 : score >= TIER_2 ? 2 : 1;
  return { tier, score, signals };
}

/** How many different words of `pattern` (a /g regex) occur in `text`, up to 2. */
function distinctMatches(text: string, pattern: RegExp): number {
  pattern.lastIndex = 0;
  let first: string | undefined;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    const word = m[0].toLowerCase();
    if (first === undefined) first = word;
    else if (word !== first) return 2;
  }
  return first === undefined ? 0 : 1;
}

/**
 * distinctMatches of the code words and the call sites together, as one
 * pattern with both would find them: the leftmost first, a word before a
 * call site starting at the same place, none inside another.
 */
export function distinctCodeWords(text: string): number {
  CODE_WORDS.lastIndex = 0;
  let word = CODE_WORDS.exec(text);
  let call = nextCallSite(text, 0);
  let first: string | undefined;
  while (word !== null || call !== undefined) {
    let found: string;
    let end: number;
    if (word !== null && (call === undefined || word.index <= call[0])) {
      found = word[0];
      end = word.index + found.length;
    } else {
      found = text.slice(call![0], call![1]);
      end = call![1];
    }
    const lower = found.toLowerCase();
    if (first === undefined) first = lower;
    else if (lower !== first) return 2;
    if (word !== null && word.index < end) {
      CODE_WORDS.lastIndex = end;
      word = CODE_WORDS.exec(text);
    }
    if (call !== undefined && call[0] < end) call = nextCallSite(text, end);
  }
  return first === undefined ? 0 : 1;
}
