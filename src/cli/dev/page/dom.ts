// The page's only way to put anything on screen: elements made one by one, and every string a
// text node. Nothing from the store ever reaches innerHTML, an attribute that runs code, or a URL.

type Child = Node | string | number | false | null | undefined | Child[];

export interface Props {
  class?: string;
  /** data-* attributes (for tests and styling). */
  data?: Record<string, string>;
  title?: string;
  type?: string;
  placeholder?: string;
  value?: string;
  disabled?: boolean;
  open?: boolean;
  onClick?: (event: MouseEvent) => void;
  onInput?: (event: Event) => void;
  onSubmit?: (event: SubmitEvent) => void;
}

/** An element with `props` and `children`; strings are text, never markup. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props.class) element.className = props.class;
  for (const [name, value] of Object.entries(props.data ?? {})) element.dataset[name] = value;
  if (props.title !== undefined) element.title = props.title;
  if (props.type !== undefined) element.setAttribute("type", props.type);
  if (props.placeholder !== undefined) element.setAttribute("placeholder", props.placeholder);
  if (props.value !== undefined) (element as HTMLInputElement).value = props.value;
  if (props.disabled) (element as HTMLButtonElement).disabled = true;
  if (props.open) (element as HTMLDetailsElement).open = true;
  if (props.onClick) element.addEventListener("click", props.onClick as EventListener);
  if (props.onInput) element.addEventListener("input", props.onInput);
  if (props.onSubmit) element.addEventListener("submit", props.onSubmit as EventListener);
  append(element, children);
  return element;
}

function append(element: Node, children: Child[]): void {
  for (const child of children) {
    if (child === false || child === null || child === undefined) continue;
    if (Array.isArray(child)) append(element, child);
    else if (child instanceof Node) element.appendChild(child);
    else element.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces `element`'s children. */
export function fill(element: Element, ...children: Child[]): void {
  element.replaceChildren();
  append(element, children);
}

/** A value as readable text: strings as they are, anything else as indented JSON. */
export function show(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A short relative or absolute time for an epoch-milliseconds value. */
export function when(value: unknown): string {
  const date = new Date(typeof value === "number" ? value : Number.NaN);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toLocaleString();
}

export function duration(ms: number | undefined): string {
  if (ms === undefined) return "";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
