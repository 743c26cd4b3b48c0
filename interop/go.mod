module github.com/flurrypt/flurry/interop

go 1.26.2

require github.com/flurrypt/flurry v0.0.0

replace github.com/flurrypt/flurry => ../
