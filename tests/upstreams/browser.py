"""The user's browser in the login tests: `BROWSER="python browser.py"` makes the gateway open the
authorization page here. A real HTTP client (httpx) follows the authorization server's redirect back
to the gateway's loopback listener, as a browser would; the test authorization server approves at
once. Loopback addresses only.

Usage: `browser.py URL`; exit 0 when the last page answered 2xx.
"""

from __future__ import annotations

import sys
from urllib.parse import urljoin, urlsplit

import httpx

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def visit(url: str) -> int:
    with httpx.Client(timeout=30.0, follow_redirects=False) as browser:
        for _ in range(10):
            assert urlsplit(url).hostname in LOOPBACK, f"the test browser goes to loopback only, not {url}"
            response = browser.get(url)
            if response.is_redirect:
                url = urljoin(url, response.headers["location"])
                continue
            return 0 if response.is_success else 1
    return 1


if __name__ == "__main__":
    sys.exit(visit(sys.argv[1]))
