/** The transcript checks of the two protocols whose transcript is `messages`. */

export function messagesProblem(body: any): string | undefined {
  return Array.isArray(body?.messages)
    ? undefined
    : "messages: Field required (an array of messages).";
}

/** The turn asked for: the number of assistant messages. */
export function assistantMessages(body: any): number {
  return (body.messages as any[]).filter((message) => message?.role === "assistant").length;
}
