// The test page: one chat, its id from the URL (`/?chat=<id>`).
import { createRoot } from "react-dom/client";
import { Chat } from "./chat.tsx";

const id = new URLSearchParams(location.search).get("chat") ?? "default";
createRoot(document.getElementById("root")!).render(<Chat id={id} />);
