// The inspector's JSON API, as the page calls it: the token from the page's own URL in a header,
// changes as JSON POSTs (the browser adds the page's Origin).

const token = new URLSearchParams(location.search).get("token") ?? "";

export class ApiError extends Error {}

async function answer<T>(response: Response): Promise<T> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = { error: text };
  }
  if (!response.ok) {
    const message = (body as { error?: unknown }).error;
    throw new ApiError(typeof message === "string" ? message : `HTTP ${response.status}`);
  }
  return body as T;
}

export async function get<T>(path: string): Promise<T> {
  return answer<T>(await fetch(path, { headers: { "x-skein-token": token } }));
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  return answer<T>(
    await fetch(path, {
      method: "POST",
      headers: { "x-skein-token": token, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
}

/** The live stream of changes (EventSource cannot send headers: the token goes in the query). */
export function events(sessionId: string | undefined): EventSource {
  const query = new URLSearchParams({ token });
  if (sessionId) query.set("session", sessionId);
  return new EventSource(`/api/events?${query}`);
}

export const sessionPath = (id: string) => `/api/sessions/${encodeURIComponent(id)}`;
