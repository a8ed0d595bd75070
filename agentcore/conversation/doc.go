// Package conversation is Poppydesk's client of Company Agents: the `poppy` conversation
// protocol of spec 8 (Poppy 0.4), with the Operations extension v2 in conversations.
//
// Spec sections implemented:
//
//   - 8.1: [Endpoint] picks the first agent.protocols entry of type "poppy"; other types are
//     skipped.
//   - 8.2: every request goes through agentcore/engine's Client of (Company, account), so it
//     carries the Session header and, signed in, the account's access token. Ownership: once a
//     request on a conversation carried account A's token, the conversation records A
//     (state.UsedAccount) and is never continued signed out or with account B ("ownership"
//     [Error]); [Manager.SignedIn] refuses another account.
//   - 8.3: [Manager.Start] and [Manager.Send]. Message IDs are chosen by Poppydesk ("msg_" and 128
//     random bits: unique for the User) and the message is persisted in the Store BEFORE it is
//     sent; a network failure sends the same ID and bytes again, and so does [Manager.Resume]
//     after a restart; message_id_conflict is an [Error] that says the message was not sent and
//     is never retried silently. `wait` and `cursor` get the reply in the same response.
//   - 8.4, 8.8: author.type "agent" for what the model or Poppydesk writes, "human" only for the
//     user's words typed in the window (the app passes AuthorHuman only from the window); `data`
//     must be an object; `context` comes from Config.Context and only fields that changed since
//     the last message that carried them are sent. Extension content is sent and read only when
//     the Company lists operations "2" (then the engine's Session declares it).
//   - 8.5: [Manager.Read] reads with cursor and wait, handles events in order, skips event IDs
//     already handled (the last 4096 are kept with the cursor), saves the cursor after handling,
//     reads again at once while has_more, reads from the beginning after cursor_expired, and skips
//     unknown event types. 8.7: [NormalizeStatus] (unknown → working) and [NormalizeResponder]
//     (unknown → human); the raw values stay visible.
//   - 8.5, transcript: with a Store that keeps transcripts (a store.Transcripts, such as the state
//     database) every handled entry is saved in the same transaction as the cursor and handled IDs
//     that cover it, keyed by event ID (stored once), so after a crash or restart the transcript
//     and the cursor agree. After a restart nothing is loaded until the window or a tool reads:
//     [Manager.View] reads the length (one index seek) and [Manager.Entries] the page asked for.
//     Text-delta pieces are never stored.
//   - 8.6: [Manager.Stream] asks for text/event-stream, reconnects with Last-Event-ID (the last
//     event handled), reports text-delta pieces ([UpdateDelta]) that the full message replaces,
//     drops the pieces of messages not received in full on reconnect ([UpdateDropDeltas]), treats
//     the Company closing the stream as normal, and reads a JSON answer as a read. The cursor is
//     saved after each event, batched while more bytes are already buffered. [Followers] keeps a
//     stream open on each conversation a reader (the window) is looking at, at most a bounded
//     number at once: following one more stops the least recently followed.
//   - 8.9 [Manager.Handoff], 8.10 Direct Conversations: Start with Parent; user_requested events
//     become Invites that only [Manager.AcceptUserRequest] (the window, after the user agreed)
//     or [Manager.DeclineUserRequest] answer; direct_opened / direct_closed track the open Direct
//     Conversation; direct_conversation_open names it. 8.12 [Manager.Close].
//   - 8.11: an authorization event, and a WWW-Authenticate challenge on a successful response,
//     are ONE authorization need ([AuthNeed], [UpdateAuthorization]); the accepted message is
//     never sent again. A refused message (401/403 challenge) is kept and sent after
//     [Manager.SignedIn] with its own ID. The conversation keeps its ID throughout.
//   - 8.13: every error is an [Error] with the code and what to do.
//   - Operations 4 and 6: an operation in a Company message's extensions.operations.operation goes
//     to Config.OnOperation (the approval queue); [Manager.SendApproval] sends the approval as a
//     message with extensions.operations.approval, with the message ID the queue chose, so a
//     retry is the same message.
//   - 10.1: Company text, author names and pictures are data; the model gets them inside
//     agentcore/modelapi's untrusted-content envelope, the window renders them as text.
//
// The SSE parser is hand-written (sse.go) because neither the standard library nor the module's
// dependencies parse server-sent events; it follows the WHATWG rules and is fuzzed (FuzzSSE).
// Nothing secret is stored: the Store gets IDs, cursors, statuses, unsent message bodies and the
// transcript (Company content and the user's words), never a token, code or Session JWT.
//
// # Limits against a hostile Company
//
// Each in-progress message keeps at most 1 MiB of text-delta pieces (later pieces are ignored;
// the full message event still replaces them), at most 64 messages are in progress per
// conversation (the oldest is dropped), at most 32 pending user_requested invites are kept (the
// oldest is dropped), one SSE connection delivers at most 64 MiB, and reconnects wait at least
// 1 s, or the stream's retry: value clamped to 1–60 s (a has_more JSON read reads again at once).
package conversation
