/// <reference types="vitest/config" />
import { defineConfig, type Plugin } from "vite";

// The Vite dev server (used by `wails dev`) injects CSS as <style> elements for hot reload,
// which style-src 'self' forbids. In dev only, allow inline styles; `vite build` keeps the
// strict policy of index.html untouched. Scripts stay 'self' in both.
const devStyles: Plugin = {
  name: "poppydesk-dev-inline-styles",
  apply: "serve",
  transformIndexHtml: (html) => html.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'"),
};

// The window's Content-Security-Policy forbids inline script (docs/DESIGN.md invariant 4), so the
// build must emit only external files: no module-preload polyfill (Vite would add it to the
// entry, which is fine, but nothing here needs it) and no inlined assets that become scripts.
export default defineConfig(({ mode }) => ({
  plugins: [devStyles],
  // The unit tests read the Go event constants in ../app to check that src/api/events.ts names
  // the same events; nothing else may be read outside the frontend.
  server: mode === "test" ? { fs: { allow: [".", "../app"] } } : undefined,
  build: {
    target: "es2022",
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: true,
  },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.ts"],
  },
}));
