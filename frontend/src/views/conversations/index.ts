// The Conversations section.

export { conversationsView, type ConversationsBackend, type ConversationsOptions } from "./view";
