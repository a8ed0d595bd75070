// The window's theme: "system" follows the desktop's light or dark preference (and its changes),
// "light" and "dark" are fixed. The chosen theme is kept by Go (Shell.SetTheme) and applied at
// every start; a fixed one becomes <html data-theme="light|dark">, which style.css reads.

export type Theme = "system" | "light" | "dark";

export const THEMES: readonly { id: Theme; label: string }[] = [
  { id: "system", label: "Same as the system" },
  { id: "light", label: "Light" },
  { id: "dark", label: "Dark" },
];

// applyTheme sets the document's theme; "system" leaves it to prefers-color-scheme (style.css),
// which follows the desktop's changes by itself.
export function applyTheme(doc: Document, theme: string): void {
  const t: Theme = theme === "light" || theme === "dark" ? theme : "system";
  doc.documentElement.dataset.themeChoice = t;
  if (t === "system") delete doc.documentElement.dataset.theme;
  else doc.documentElement.dataset.theme = t;
}
