"""The session ledger: one session's verdicts, what passing frames teach it, and the report they go
into; the same books for the live gateway, its bridges and ``check`` on a capture. No I/O."""
