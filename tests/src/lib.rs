//! Shared helpers of the integration tests live in the test modules.
