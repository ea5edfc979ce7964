//! The test suite of prompty: conformance vectors, UI tests and end-to-end tests (see `tests/`).
