package sqscreds

import "errors"

// ErrInvalid is returned by Decode for a value that is not base64 of a JSON
// credentials object, or is too long.
var ErrInvalid = errors.New("invalid SQS credentials")

// ErrIncomplete is returned by Decode and Encode when the access key id or
// the secret key is empty.
var ErrIncomplete = errors.New("SQS credentials lack an access key id or a secret key")
