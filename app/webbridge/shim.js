// Poppydesk browser-testable bridge: defines window.go and window.runtime like the Wails
// desktop runtime does, over fetch and server-sent events to the local bridge server.
(function () {
  "use strict";
  var manifest = /*MANIFEST*/{};

  function call(name, args) {
    return fetch("/bridge/call", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: name, args: args })
    }).then(function (res) {
      return res.json().then(function (body) {
        if (!res.ok || body.error) {
          throw body.error || ("The call to " + name + " failed with HTTP " + res.status);
        }
        return body.result === undefined ? null : body.result;
      });
    });
  }

  var go = {};
  Object.keys(manifest).forEach(function (pkg) {
    go[pkg] = {};
    Object.keys(manifest[pkg]).forEach(function (st) {
      var obj = {};
      manifest[pkg][st].forEach(function (m) {
        obj[m] = function () {
          return call(pkg + "." + st + "." + m, Array.prototype.slice.call(arguments));
        };
      });
      go[pkg][st] = obj;
    });
  });

  var listeners = {};
  function onMultiple(name, cb, max) {
    var l = { cb: cb, left: max };
    (listeners[name] = listeners[name] || []).push(l);
    return function () {
      var ls = listeners[name] || [];
      var i = ls.indexOf(l);
      if (i >= 0) ls.splice(i, 1);
    };
  }
  function dispatch(name, data) {
    var ls = (listeners[name] || []).slice();
    ls.forEach(function (l) {
      if (l.left === 0) return;
      if (l.left > 0) l.left--;
      try { l.cb.apply(null, data); } catch (e) { console.error(e); }
    });
    if (listeners[name]) {
      listeners[name] = listeners[name].filter(function (l) { return l.left !== 0; });
    }
  }

  window.go = go;
  window.runtime = {
    EventsOnMultiple: onMultiple,
    EventsOn: function (name, cb) { return onMultiple(name, cb, -1); },
    EventsOnce: function (name, cb) { return onMultiple(name, cb, 1); },
    EventsOff: function () {
      for (var i = 0; i < arguments.length; i++) delete listeners[arguments[i]];
    },
    EventsOffAll: function () { listeners = {}; },
    EventsEmit: function (name) {
      var data = Array.prototype.slice.call(arguments, 1);
      dispatch(name, data);
      fetch("/bridge/emit", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: name, data: data })
      }).catch(function (e) { console.error("bridge emit failed", e); });
    }
  };

  var es = new EventSource("/bridge/events");
  es.onmessage = function (e) {
    var m = JSON.parse(e.data);
    dispatch(m.name, m.data || []);
  };
})();
