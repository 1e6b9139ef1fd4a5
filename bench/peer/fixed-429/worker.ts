/** The ceiling of any flood path: a Worker that answers every request with the same 429 and does nothing else. */

export default {
  fetch(): Response {
    return new Response("Too Many Requests", { status: 429, headers: { "retry-after": "60" } });
  },
};
