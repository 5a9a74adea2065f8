// Command apf-bootstrap writes apf-bootstrap.json: the API Priority and
// Fairness configuration objects kube-apiserver 1.33 maintains
// (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap), each as
// flowcontrol.apiserver.k8s.io/v1 JSON exactly as encoding/json writes it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// Set is one strategy's objects, in the order the ensurer creates them.
type Set struct {
	FlowSchemas                 []*flowcontrolv1.FlowSchema                 `json:"flowSchemas"`
	PriorityLevelConfigurations []*flowcontrolv1.PriorityLevelConfiguration `json:"priorityLevelConfigurations"`
}

// Bootstrap is the file's content.
type Bootstrap struct {
	Mandatory Set `json:"mandatory"`
	Suggested Set `json:"suggested"`
}

func flowSchemas(in []*flowcontrolv1.FlowSchema) []*flowcontrolv1.FlowSchema {
	out := make([]*flowcontrolv1.FlowSchema, 0, len(in))
	for _, o := range in {
		o = o.DeepCopy()
		o.APIVersion = flowcontrolv1.SchemeGroupVersion.String()
		o.Kind = "FlowSchema"
		out = append(out, o)
	}
	return out
}

func priorityLevels(in []*flowcontrolv1.PriorityLevelConfiguration) []*flowcontrolv1.PriorityLevelConfiguration {
	out := make([]*flowcontrolv1.PriorityLevelConfiguration, 0, len(in))
	for _, o := range in {
		o = o.DeepCopy()
		o.APIVersion = flowcontrolv1.SchemeGroupVersion.String()
		o.Kind = "PriorityLevelConfiguration"
		out = append(out, o)
	}
	return out
}

// Build returns upstream's bootstrap configuration.
func Build() Bootstrap {
	return Bootstrap{
		Mandatory: Set{
			FlowSchemas:                 flowSchemas(bootstrap.MandatoryFlowSchemas),
			PriorityLevelConfigurations: priorityLevels(bootstrap.MandatoryPriorityLevelConfigurations),
		},
		Suggested: Set{
			FlowSchemas:                 flowSchemas(bootstrap.SuggestedFlowSchemas),
			PriorityLevelConfigurations: priorityLevels(bootstrap.SuggestedPriorityLevelConfigurations),
		},
	}
}

// Encode renders b as the file writes it (encoding/json, indented).
func Encode(b Bootstrap) ([]byte, error) {
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func main() {
	output := flag.String("o", "", "write the JSON to this file instead of stdout")
	flag.Parse()
	out, err := Encode(Build())
	if err == nil {
		if *output == "" {
			_, err = os.Stdout.Write(out)
		} else {
			err = os.WriteFile(*output, out, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
