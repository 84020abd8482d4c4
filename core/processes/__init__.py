"""Every process kerneldiff starts, and the one policy for which kind where.

Three process models, each for one shape of work; nothing else in core starts a process:

* **Worker processes over shared memory** (`forkserver`, used by `ingest.workers`): one big trace
  (`forkserver.thresholds`: on two CPUs 192 MB of JSON, 24 MB gzip; with more, 64 MB and 8 MB)
  decoded by several processes, its runs of events passed through shared-memory slots. Started by
  plain fork while this process has one thread, by a fork server (`forkserver.mp_context`) once
  threads run (the explorer, an inflater thread): fork copies one thread, and a lock another thread
  held would stay held in the child. A UI starts the fork server ahead of its first big load
  (`forkserver.prepare`, from a thread).
* **One forked child beside this process** (`fork_child.Beside`): one function's result (a model,
  a comparison's kernel pairs) computed on the second core while this process does other work, sent
  back pickled with its arrays out of band. Only when `fork_child.can_fork()` (the main thread and
  no other thread running: the CLI, the explorer before its first frame). Used for a pair's second
  trace when each load fits in one process (`orchestration`), a comparison computed ahead from the
  model cache (`orchestration`), and the kernel pairs and fusions of a large comparison
  (`compare.engine`).
* **A forked process pool** (`pool.fork_pool`): many independent files (the ranks of a run), each
  reduced to a small summary in the process that read it; one process per file at a time, as many
  as CPUs and memory allow (`ranks.run`). Started by fork: the caller is the CLI's main thread.

A trace big enough for workers is loaded beside another only on two CPUs and when the two are of
sizes alike (`forkserver.pair_beside`: one process each then beats two workers each, in turn); else
the pair is loaded in turn, each load using the workers. Threads (the gzip inflater, the explorer's warm-up and its loads) are
not processes and are not decided here; Textual workers belong to the explorer.
"""
