import { HttpProblem } from '../../platform/errors.ts';

/** The replica making the call went away before finishing; a client that received nothing yet may try again. */
export class LeaderLost extends Error {}

/**
 * The flight no longer holds the answer from its start (it passed the
 * cache's entry limit, or a follower replica fell behind the window of it
 * Redis keeps): a client that received nothing yet makes its own call
 * instead of joining (in-flight.ts).
 */
export class JoinedTooLate extends Error {}

export const clientClosed = () => new HttpProblem(499, 'client_closed_request', 'The client closed the connection.');

/** Told to a client whose stream had started when the replica making the call went away. */
export const leaderLost = () =>
  new HttpProblem(502, 'dedup_leader_lost', 'The gateway replica answering this identical request went away before the answer was complete; send the request again.', {
    type: 'api_error',
  });

/** Told (in its stream) to a client following another replica's call that fell behind what Redis keeps of it. */
export const fellBehind = () =>
  new HttpProblem(502, 'dedup_fell_behind', "This stream, shared with an identical request answered on another gateway replica, fell too far behind it to go on; send the request again.", {
    type: 'api_error',
  });

/**
 * Told (in its stream) to a client sharing another's answer whose socket
 * stopped taking it: the gateway does not hold a whole answer for one
 * client, so past a bound of unsent data the client is cut off.
 */
export const clientTooSlow = () =>
  new HttpProblem(408, 'client_too_slow', 'This client read the stream too slowly and was cut off; read it as it comes, or send the request again.', {
    type: 'invalid_request_error',
  });

/** The error a failed flight tells its clients whose stream is open (and those waiting, unless they may call again). */
export function problemOf(err: unknown): HttpProblem {
  if (err instanceof HttpProblem) return err;
  if (err instanceof LeaderLost) return leaderLost();
  if (err instanceof JoinedTooLate) return fellBehind();
  return new HttpProblem(500, 'internal_error', 'The gateway failed.', { cause: err });
}
