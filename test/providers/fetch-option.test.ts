/**
 * The `fetch` provider option (design/interactive.md, "Model settings and transport"): a
 * user-supplied fetch carries every HTTP request, retries included, with timeouts and abort as
 * with the default; anything but a function is refused at assembly.
 */
import { APITimeoutError, ConfigurationError, ProtocolError } from "skein";
import { afterEach, describe, expect, it, vi } from "vitest";
import { closeMockServers } from "../support/servers.ts";
import { FAST, PROTOCOLS, RETRY_SOON, serve, streamModel } from "./helpers.ts";

afterEach(async () => {
  vi.restoreAllMocks();
  await closeMockServers();
});

const realFetch = globalThis.fetch;

/** A fetch that records each call (URL and init) and passes it on to the real one. */
function recordingFetch() {
  const calls: { url: string; init: RequestInit | undefined }[] = [];
  const send: typeof fetch = (input, init) => {
    calls.push({ url: String(input), init });
    return realFetch(input, init);
  };
  return { calls, fetch: send };
}

describe.each(PROTOCOLS)("$name: fetch", (protocol) => {
  const { make } = protocol;
  const path = protocol.name === "anthropic" ? "/v1/messages" : "/v1/chat/completions";

  it("carries every request, retries included, and the global fetch carries none", async () => {
    const server = await serve([{ text: "ok", status: 429, headers: RETRY_SOON, times: 2 }]);
    const global = vi.spyOn(globalThis, "fetch");
    const route = recordingFetch();
    const model = make(server.url, { ...FAST, fetch: route.fetch });
    const first = await streamModel(model);
    expect(first.filter((event) => event.type === "retry")).toHaveLength(2);
    expect(first.at(-1)).toMatchObject({ type: "message" });
    await streamModel(model);
    expect(server.requests.map((request) => request.attempt)).toEqual([1, 2, 3, 4]);
    expect(route.calls.map((call) => call.url)).toEqual(Array(4).fill(`${server.url}${path}`));
    expect(global).not.toHaveBeenCalled();
    // The init is what the default fetch gets: the body, the headers, the signal, no redirects.
    const init = route.calls[0]!.init!;
    expect(init).toMatchObject({ method: "POST", redirect: "error" });
    expect(init.signal).toBeInstanceOf(AbortSignal);
    expect(JSON.parse(String(init.body))).toMatchObject({ stream: true });
    expect((init.headers as Record<string, string>)["content-type"]).toBe("application/json");
  });

  it("keeps timeouts: a response that never comes through the user's fetch ends as APITimeoutError", async () => {
    const server = await serve([{ hang: true }]);
    const route = recordingFetch();
    const model = make(server.url, { ...FAST, timeoutMs: 100, maxRetries: 0, fetch: route.fetch });
    await expect(streamModel(model)).rejects.toBeInstanceOf(APITimeoutError);
    expect(route.calls).toHaveLength(1);
    expect(route.calls[0]!.init!.signal!.aborted).toBe(true);
  });

  it("keeps abort: the caller's signal reaches the user's fetch", async () => {
    const server = await serve([{ hang: true }]);
    const route = recordingFetch();
    const controller = new AbortController();
    const model = make(server.url, { ...FAST, fetch: route.fetch });
    const pending = streamModel(model, {}, controller.signal);
    await vi.waitFor(() => expect(server.requests).toHaveLength(1));
    controller.abort(new Error("stop"));
    await expect(pending).rejects.toThrow("stop");
    expect(route.calls[0]!.init!.signal!.aborted).toBe(true);
  });

  it("a fetch that resolves with something other than a Response is a ProtocolError, not retried", async () => {
    let calls = 0;
    const broken = (async () => {
      calls++;
      return { status: 200 };
    }) as unknown as typeof fetch;
    const model = make("http://127.0.0.1:1", { ...FAST, fetch: broken });
    const error = await streamModel(model).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toBe(
      "The fetch function given to the provider resolved with an object instead of a Response (with a web ReadableStream body): give a fetch with the signature of globalThis.fetch.",
    );
    expect(calls).toBe(1);
  });

  it("a fetch that throws is a connection failure, retried through the same fetch", async () => {
    const server = await serve([{ text: "ok" }]);
    let calls = 0;
    const flaky: typeof fetch = (input, init) => {
      calls++;
      if (calls === 1) return Promise.reject(new TypeError("fetch failed"));
      return realFetch(input, init);
    };
    const events = await streamModel(make(server.url, { ...FAST, fetch: flaky }));
    expect(calls).toBe(2);
    expect(events.filter((event) => event.type === "retry")).toMatchObject([
      { error: { name: "APIConnectionError" } },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "message" });
  });

  it("refuses a fetch that is not a function, with the factory's prefix", () => {
    const prefix = `${protocol.name}()`;
    expect(() => make("http://127.0.0.1:1", { fetch: "x" } as never)).toThrow(
      new ConfigurationError(
        `${prefix}: fetch must be a function with the signature of globalThis.fetch, received "x".`,
      ),
    );
    expect(() => make("http://127.0.0.1:1", { fetch: null } as never)).toThrow(
      `${prefix}: fetch must be a function with the signature of globalThis.fetch, received null.`,
    );
    expect(() => make("http://127.0.0.1:1", { fetch: {} } as never)).toThrow(
      `${prefix}: fetch must be a function with the signature of globalThis.fetch, received an object.`,
    );
  });

  it("checks structuredOutputs, and still rejects unknown options", () => {
    const prefix = `${protocol.name}()`;
    expect(() => make("http://127.0.0.1:1", { structuredOutputs: "yes" } as never)).toThrow(
      new ConfigurationError(`${prefix}: structuredOutputs must be a boolean, received "yes".`),
    );
    expect(() => make("http://127.0.0.1:1", { fetcher: realFetch } as never)).toThrow(
      new ConfigurationError(
        `${prefix}: unknown option "fetcher". Check for a typo, or upgrade the SDK if this option was added in a newer version.`,
      ),
    );
  });
});
