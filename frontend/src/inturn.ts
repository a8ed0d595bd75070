// Reads of one screen run in turn: each read starts after the one before it has finished, so a
// click or a filter change while a read runs is never dropped, every read's answer is shown in
// the order it was asked, and no answer is thrown away because a newer read started (under load
// a steady stream of change events would otherwise keep every answer from being shown). A burst
// of change events reads again once: at most one reload waits behind the read that runs.

export interface InTurn {
  // run queues read after every read already queued.
  run(read: () => Promise<void>): void;
  // reload queues read unless a reload is already waiting to start.
  reload(read: () => Promise<void>): void;
  // busy says whether a read runs or waits.
  busy(): boolean;
}

// inTurn makes the queue of one screen; onBusy hears when it starts and stops having work.
export function inTurn(onBusy?: (busy: boolean) => void): InTurn {
  let chain: Promise<void> = Promise.resolve();
  let queued = 0;
  let reloadWaiting = false;
  const run = (read: () => Promise<void>) => {
    if (queued++ === 0) onBusy?.(true);
    chain = chain
      .then(read)
      .catch(() => undefined)
      .finally(() => {
        if (--queued === 0) onBusy?.(false);
      });
  };
  return {
    run,
    reload(read) {
      if (reloadWaiting) return;
      reloadWaiting = true;
      run(() => {
        reloadWaiting = false;
        return read();
      });
    },
    busy: () => queued > 0,
  };
}
