// The Sign-in section: the view, and what the Companies section uses to hand a Company over.

export { signInView, type SignInOptions } from "./view";
export { openSignIn } from "./handover";
export { offeredWords } from "./company";
export type { SignInBackend } from "./screen";
