//! The toolhost plugin SDK.
