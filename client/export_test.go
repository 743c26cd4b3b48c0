package client

// CloseLinger is closeLinger, for the chain tests.
const CloseLinger = closeLinger
