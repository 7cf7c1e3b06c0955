package proxier_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/ipvskit/ipvskit/proxier"
)

// A State read from YAML (JSON reads the same way), and written back.
func ExampleDecodeState() {
	state, err := proxier.DecodeState([]byte(`
services:
  default/web:
    clusterIPs: [198.18.100.1]
    ports:
      - {name: http, protocol: tcp, port: 80, targetPort: 8080}
    sessionAffinity: {timeout: 600}
    scheduler: sh
    schedulerFlags: [sh-port]
    endpoints:
      - {addr: 198.18.1.1, ready: true}
`))
	if err != nil {
		panic(err)
	}
	web := state.Services["default/web"]
	fmt.Println(web.Ports[0].Protocol == proxier.TCP, web.SessionAffinity.Timeout, web.SchedulerFlags)
	out, err := proxier.EncodeStateYAML(state)
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(out)
	// Output:
	// true 10m0s flag-2
	// services:
	//   default/web:
	//     clusterIPs: [198.18.100.1]
	//     ports:
	//       - {name: http, protocol: TCP, port: 80, targetPort: 8080}
	//     sessionAffinity: {timeout: 10m}
	//     scheduler: sh
	//     schedulerFlags: [sh-port]
	//     endpoints:
	//       - {addr: 198.18.1.1, ready: true}
}

// Every problem of form, with its path, value and line, as the
// *ValidationError that validation returns too.
func ExampleDecodeState_problems() {
	_, err := proxier.DecodeState([]byte(`{"services": {"web": {
  "ports": [{"port": "80", "protocol": "HTTP"}],
  "ExternalTrafficPolicy": "Local",
  "scheduler": "mh", "schedulerFlags": ["sh-port"],
  "endpoints": [{"addr": "198.18.300.1"}]}}}`))
	var ve *proxier.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			fmt.Println(p)
		}
	}
	// Output:
	// services["web"].ExternalTrafficPolicy: is not a field of a service (did you mean externalTrafficPolicy?) (line 3)
	// services["web"].ports[0].protocol: "HTTP" is not TCP, UDP or SCTP (line 2)
	// services["web"].ports[0].port: "80" is a string, want a number (line 2)
	// services["web"].schedulerFlags[0]: "sh-port" is a flag of the sh scheduler, not of mh (line 4)
	// services["web"].endpoints[0].addr: "198.18.300.1" is not an IP address (line 5)
}
