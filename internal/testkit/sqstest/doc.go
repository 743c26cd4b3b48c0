// Package sqstest is an in-memory Amazon SQS server for tests, speaking the
// AWS JSON 1.0 protocol that the AWS SDK for Go v2 uses (service/sqs since
// v1.28). It listens on loopback, like net/http/httptest (or on a listener
// the test gives it, over HTTP or HTTPS), and implements just what Flurry's
// SQS rendezvous uses: CreateQueue,
// GetQueueUrl, ListQueues, GetQueueAttributes, DeleteQueue, SendMessage,
// ReceiveMessage (with long polling and visibility timeouts) and
// DeleteMessage.
//
// # Wire format
//
// Every call is an HTTP POST to "/":
//
//	POST / HTTP/1.1
//	Content-Type: application/x-amz-json-1.0
//	X-Amz-Target: AmazonSQS.SendMessage
//	Authorization: AWS4-HMAC-SHA256 Credential=<access key id>/<date>/<region>/sqs/aws4_request, ...
//
//	{"QueueUrl":"http://127.0.0.1:PORT/000000000000/q","MessageBody":"..."}
//
// answered with 200 and a JSON object, or with 400 and
//
//	x-amzn-query-error: AWS.SimpleQueueService.NonExistentQueue;Sender
//
//	{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"..."}
//
// Signatures are not checked; Config.AccessKeyID, if set, must appear in the
// Authorization header's credential scope (so a test can check which key a
// client used).
//
// Goaws (the SQS emulator DESIGN.md names) speaks only the older query
// protocol in its Go-module releases (v0.4.5), which current SDKs no longer
// send; hence this package.
package sqstest
