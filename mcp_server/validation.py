"""The protocol validator as a library: the chain's own checks, for a test suite that starts no server.

The public face of ``offline/library.py`` (what is documented and kept stable is listed here).
"""

from __future__ import annotations

from .offline.library import (
    ValidationResult,
    default_registry,
    format_validation_error,
    validate_definition,
    validate_error_code,
    validate_field_type,
    validate_jsonrpc,
    validate_message,
    validate_method_name,
    validate_notification,
    validate_notification_name,
    validate_request,
    validate_required_fields,
    validate_response,
)

__all__ = [
    "ValidationResult",
    "default_registry",
    "format_validation_error",
    "validate_definition",
    "validate_error_code",
    "validate_field_type",
    "validate_jsonrpc",
    "validate_message",
    "validate_method_name",
    "validate_notification",
    "validate_notification_name",
    "validate_request",
    "validate_required_fields",
    "validate_response",
]
