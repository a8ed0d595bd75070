// Preloaded (node --import ./loopback.mjs) into a server the tests run, so that it listens on
// 127.0.0.1 only: a listen(port) without a host would take every interface.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const rest = args.slice(1).filter((a) => typeof a !== "string");
    return listen.call(this, Number(args[0]), "127.0.0.1", ...rest);
  }
  if (args[0] && typeof args[0] === "object" && !args[0].path && !args[0].host) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
