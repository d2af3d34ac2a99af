/*
Copyright 2026 The espo-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command espo is the one binary of espo-operator: the controller manager, the trainer,
// the policy workers and the dataset tools are its subcommands.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// newRootCommand assembles the espo command tree. Each subcommand lives in its own
// cmd_<name>.go file beside this one.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "espo",
		Short:         "ESPO reinforcement fine-tuning of GUI agents on Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCommand(),
		newManagerCommand(),
		newDatasetCommand(),
		newTrainerCommand(),
		newWorkerCommand(),
		newLocalCommand(),
		newExportCommand(),
	)
	return root
}
