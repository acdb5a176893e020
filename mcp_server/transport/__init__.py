"""Transports move raw frames between a peer and the chain. A transport never parses JSON."""
