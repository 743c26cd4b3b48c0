package main

// FLURRY_PROFILE_DIR makes the binary profile itself (docs/performance.md).
import _ "github.com/flurrypt/flurry/internal/envprofile"
