import { useChat } from "@ai-sdk/react";
import { lastAssistantMessageIsCompleteWithApprovalResponses as answered } from "ai";

// `id` is the session id: POST /api/chat sends, GET /api/chat/<id>/stream resumes on load.
export function Chat({ id }: { id: string }) {
  const chat = useChat({ id, resume: true, sendAutomaticallyWhen: answered });
  const answer = (id: string, approved: boolean) => chat.addToolApprovalResponse({ id, approved });
  return (<main>
    {chat.messages.map((message) => <div key={message.id} className={message.role}>
      {message.parts.map((part, i) => part.type === "text" ? <p key={i}>{part.text}</p>
        : part.type !== "dynamic-tool" ? null
        : part.state !== "approval-requested" ? <pre key={i}>{part.toolName}: {String(part.output ?? part.errorText ?? "…")}</pre>
        : <p key={i}>{part.toolName} {JSON.stringify(part.input)}
            <button type="button" onClick={() => answer(part.approval.id, true)}>Approve</button>
            <button type="button" onClick={() => answer(part.approval.id, false)}>Deny</button></p>)}
    </div>)}
    <form onSubmit={(e) => { e.preventDefault(); chat.sendMessage({ text: String(new FormData(e.currentTarget).get("text")) }); e.currentTarget.reset(); }}>
      <input name="text" placeholder="Ask" autoComplete="off" /></form>
  </main>);
}
