// Package nsfdtest checks that a client constructor follows the Config.NetNS
// rule of package nsfd, against the running kernel, in namespaces the test
// makes.
package nsfdtest
