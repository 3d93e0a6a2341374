// useChat's own machinery without React: ai's AbstractChat with its DefaultChatTransport, whose
// fetch calls a handler directly (or a URL), so the tests speak exactly the wire a page speaks.
import {
  AbstractChat,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  type UIMessage,
} from "ai";

class ArrayState implements ChatState<UIMessage> {
  status: ChatStatus = "ready";
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.messages.map((each, at) => (at === index ? message : each));
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

export class TestChat extends AbstractChat<UIMessage> {
  readonly requests: { method: string; url: string; body: any }[] = [];

  constructor(
    id: string,
    handler: (request: Request) => Promise<Response>,
    options: { api?: string; headers?: Record<string, string> } = {},
  ) {
    const requests: { method: string; url: string; body: any }[] = [];
    super({
      id,
      state: new ArrayState(),
      transport: new DefaultChatTransport({
        api: options.api ?? "http://127.0.0.1/api/chat",
        headers: options.headers,
        fetch: async (input, init) => {
          const request = new Request(input as string, init);
          requests.push({
            method: request.method,
            url: request.url,
            body: init?.body ? JSON.parse(String(init.body)) : undefined,
          });
          return handler(request);
        },
      }),
    });
    this.requests = requests;
  }

  override get messages(): UIMessage[] {
    return this.state.messages;
  }

  override get error(): Error | undefined {
    return this.state.error;
  }

  get lastStatus(): ChatStatus {
    return this.state.status;
  }

  /** The approval ids the last message asks for. */
  pendingApprovals(): { id: string; toolCallId: string }[] {
    const last = this.messages.at(-1);
    return (last?.parts ?? []).flatMap((part: any) =>
      part.state === "approval-requested"
        ? [{ id: part.approval.id, toolCallId: part.toolCallId }]
        : [],
    );
  }

  text(message = this.messages.at(-1)): string {
    return (message?.parts ?? [])
      .map((part: any) => (part.type === "text" ? part.text : ""))
      .join("");
  }
}
