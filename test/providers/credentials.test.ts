/**
 * Issue 8, section 6 (RELIABILITY C12, C16): a key read from the environment goes only to its
 * provider's own host or to the base URL given beside it in the same environment. Another base
 * URL, without a key of its own, gets no key; its 401 says which option to set.
 */
import { anthropic, createAgent, createBareAgent, openai, query } from "skein";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../cli/helpers.ts";
import { useEnv } from "../support/env.ts";
import { closeRawServers, type RawServer, rawServer } from "../support/servers.ts";

const VARIABLES = [
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_BASE_URL",
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "DEEPSEEK_API_KEY",
] as const;
// Unset for each test (which sets what it needs), and put back after it.
const setEnv = useEnv();
beforeEach(() => {
  for (const name of VARIABLES) setEnv(name, undefined);
});
afterEach(closeRawServers);

const ANTHROPIC_SECRET = "sk-ant-from-the-environment";
const OPENAI_SECRET = "sk-openai-from-the-environment";

/** A server that refuses every request as a provider does without a valid key. */
function refusingServer(): Promise<RawServer> {
  return rawServer((_request, response) => {
    response.writeHead(401, { "content-type": "application/json" });
    response.end(
      JSON.stringify({
        type: "error",
        error: { type: "authentication_error", message: "invalid x-api-key" },
      }),
    );
  });
}

/** The credentials a request carried, whatever header they came in. */
function credentials(server: RawServer): string[] {
  return server.requests.flatMap((request) =>
    [request.headers["x-api-key"], request.headers.authorization].flatMap((value) =>
      value === undefined ? [] : [String(value)],
    ),
  );
}

describe("createAgent with a model name and another server's base URL", () => {
  it("sends no ANTHROPIC_API_KEY to it when the app's own key variable is unset", async () => {
    process.env.ANTHROPIC_API_KEY = ANTHROPIC_SECRET;
    const server = await refusingServer();
    const agent = createAgent({
      model: "deepseek-chat",
      apiKey: process.env.DEEPSEEK_API_KEY,
      baseURL: `${server.url}/anthropic`,
      tools: [],
    });
    const result = await agent.run("hello");
    expect(server.requests).toHaveLength(1);
    expect(credentials(server)).toEqual([]);
    expect(result.subtype).toBe("error_during_execution");
    expect(result.error?.name).toBe("AuthenticationError");
    expect(result.error?.status).toBe(401);
    expect(result.error?.message).toMatch(/No API key was sent/);
    expect(result.error?.message).toMatch(/ANTHROPIC_API_KEY is sent only to api\.anthropic\.com/);
    expect(result.error?.message).toMatch(/Pass apiKey/);
    expect(JSON.stringify(result)).not.toContain(ANTHROPIC_SECRET);
  });

  it("query() follows the same rule", async () => {
    process.env.ANTHROPIC_API_KEY = ANTHROPIC_SECRET;
    const server = await refusingServer();
    let error: string | undefined;
    for await (const event of query({
      prompt: "hello",
      model: "deepseek-chat",
      baseURL: server.url,
      tools: [],
    })) {
      if (event.type === "result") error = event.error?.message;
    }
    expect(credentials(server)).toEqual([]);
    expect(error).toMatch(/No API key was sent.*Pass apiKey/);
  });

  it("sends the key given with it (apiKey and baseURL together)", async () => {
    process.env.ANTHROPIC_API_KEY = ANTHROPIC_SECRET;
    const server = await refusingServer();
    await createBareAgent({ model: "m", apiKey: "sk-deepseek", baseURL: server.url }).run("hi");
    expect(credentials(server)).toEqual(["sk-deepseek"]);
  });

  it("without any key in the environment, the 401 says to pass apiKey", async () => {
    const server = await refusingServer();
    const result = await createBareAgent({ model: "m", baseURL: server.url }).run("hi");
    expect(credentials(server)).toEqual([]);
    expect(result.error?.message).toMatch(/^401 authentication_error: invalid x-api-key\. /);
    expect(result.error?.message).toMatch(
      /No API key was sent to 127\.0\.0\.1:\d+: pass apiKey \(to createAgent or anthropic\(\)\)/,
    );
  });
});

describe("the environment's own base URL gets the environment's key", () => {
  it("ANTHROPIC_BASE_URL with no baseURL option", async () => {
    process.env.ANTHROPIC_API_KEY = ANTHROPIC_SECRET;
    const server = await refusingServer();
    process.env.ANTHROPIC_BASE_URL = server.url;
    const result = await createBareAgent({ model: "m" }).run("hi");
    expect(credentials(server)).toEqual([ANTHROPIC_SECRET]);
    // A key was sent, so the refusal is about that key: no hint about a missing one (only the
    // model-name hint: "m" has no protocol prefix).
    expect(result.error?.message).toMatch(
      /^401 authentication_error: invalid x-api-key\. The model name "m"/,
    );
    expect(result.error?.message).not.toMatch(/No API key was sent/);
  });

  it("a baseURL option that names ANTHROPIC_BASE_URL itself (trailing slash aside)", async () => {
    process.env.ANTHROPIC_API_KEY = ANTHROPIC_SECRET;
    const server = await refusingServer();
    process.env.ANTHROPIC_BASE_URL = `${server.url}/proxy/`;
    await createBareAgent({ model: "m", baseURL: `${server.url}/proxy` }).run("hi");
    expect(credentials(server)).toEqual([ANTHROPIC_SECRET]);
  });

  it("but not another path on the same server as ANTHROPIC_BASE_URL", async () => {
    process.env.ANTHROPIC_API_KEY = ANTHROPIC_SECRET;
    const server = await refusingServer();
    process.env.ANTHROPIC_BASE_URL = `${server.url}/proxy`;
    await createBareAgent({ model: anthropic({ baseURL: `${server.url}/other` }) }).run("hi");
    expect(credentials(server)).toEqual([]);
  });
});

describe("openai()", () => {
  it("sends no OPENAI_API_KEY to another base URL, and its 401 says to pass apiKey", async () => {
    process.env.OPENAI_API_KEY = OPENAI_SECRET;
    const server = await refusingServer();
    const model = openai({ baseURL: `${server.url}/v1`, model: "m" });
    const result = await createBareAgent({ model }).run("hi");
    expect(server.requests).toHaveLength(1);
    expect(credentials(server)).toEqual([]);
    expect(result.error?.message).toMatch(
      /No API key was sent: OPENAI_API_KEY is sent only to api\.openai\.com or to OPENAI_BASE_URL\. Pass apiKey \(to createAgent or openai\(\)\)/,
    );
  });

  it("sends it to OPENAI_BASE_URL, as a bearer token", async () => {
    process.env.OPENAI_API_KEY = OPENAI_SECRET;
    const server = await refusingServer();
    process.env.OPENAI_BASE_URL = `${server.url}/v1`;
    await createBareAgent({ model: openai({ model: "m" }) }).run("hi");
    expect(credentials(server)).toEqual([`Bearer ${OPENAI_SECRET}`]);
  });

  it("sends an explicit apiKey to an explicit baseURL", async () => {
    process.env.OPENAI_API_KEY = OPENAI_SECRET;
    const server = await refusingServer();
    await createBareAgent({
      model: openai({ baseURL: `${server.url}/v1`, apiKey: "sk-local", model: "m" }),
    }).run("hi");
    expect(credentials(server)).toEqual(["Bearer sk-local"]);
  });
});

describe("the CLI", () => {
  it("sends no key to a --base-url other than the provider's or ANTHROPIC_BASE_URL", async () => {
    const server = await refusingServer();
    const result = await runCli(["--base-url", server.url, "hello"], {
      env: { ANTHROPIC_API_KEY: ANTHROPIC_SECRET },
    });
    expect(server.requests).toHaveLength(1);
    expect(credentials(server)).toEqual([]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/No API key was sent/);
    expect(result.stderr).not.toContain(ANTHROPIC_SECRET);
  });

  it("sends the key to ANTHROPIC_BASE_URL", async () => {
    const server = await refusingServer();
    await runCli(["hello"], {
      env: { ANTHROPIC_API_KEY: ANTHROPIC_SECRET, ANTHROPIC_BASE_URL: server.url },
    });
    expect(credentials(server)).toEqual([ANTHROPIC_SECRET]);
  });
});
