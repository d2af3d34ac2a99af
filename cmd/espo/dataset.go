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

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	trainingv1alpha1 "github.com/espo-dev/espo-operator/api/v1alpha1"
	"github.com/espo-dev/espo-operator/trainer/dataset"
)

// newDatasetCommand is `espo dataset`: generate, validate and measure SmartSpot
// episode files (docs/dataset-format.md).
func newDatasetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Generate, validate and measure SmartSpot episode files (JSONL)",
	}
	cmd.AddCommand(newDatasetGenerateCommand(), newDatasetValidateCommand(), newDatasetStatsCommand())
	return cmd
}

func newDatasetGenerateCommand() *cobra.Command {
	var (
		channels string
		opts     dataset.GenerateOptions
		out      string
	)
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Generate SmartSpot-shaped episodes with simulated users; the same seed gives the same bytes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if channels != "" {
				opts.Channels = strings.Split(channels, ",")
			}
			if out == "" || out == "-" {
				return dataset.Write(cmd.OutOrStdout(), opts)
			}
			return writeFileAtomic(out, func(w io.Writer) error { return dataset.Write(w, opts) })
		},
	}
	// The defaults are a synthetic dataset source's, so that both generate the same data.
	cmd.Flags().StringVar(&channels, "channels", defaultChannels(),
		"comma-separated channels, of "+strings.Join(dataset.Channels(), ",")+"; episodes go round-robin over them")
	cmd.Flags().IntVar(&opts.Episodes, "episodes", trainingv1alpha1.DefaultSyntheticEpisodes, "number of episodes in all")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", trainingv1alpha1.DefaultSyntheticSeed, "random seed")
	cmd.Flags().StringVar(&opts.Difficulty, "difficulty", string(trainingv1alpha1.DefaultSyntheticDifficulty),
		"standard (every preference revealed by the search, a filter or an option page) or hard (half of them by behaviour only, changed choices, label noise, hard negatives, paraphrases)")
	cmd.Flags().StringVarP(&out, "output", "o", "-", "output file (- for standard output)")
	return cmd
}

// defaultChannels are the channels a synthetic dataset source generates when it
// names none, comma-separated.
func defaultChannels() string {
	var names []string
	for _, c := range trainingv1alpha1.DefaultSyntheticChannels() {
		names = append(names, string(c))
	}
	return strings.Join(names, ",")
}

// writeFileAtomic writes a file through a temporary file in the same folder, so
// that a failed run leaves no partial file behind.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(dirOf(path), ".espo-dataset-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := errors.Join(write(f), f.Chmod(0o644), f.Close()); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i+1]
	}
	return "."
}

func newDatasetValidateCommand() *cobra.Command {
	var maxLine int
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check episode files; print every problem (file:line: episode: field: message) and fail if there is any",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			problems, episodes := 0, 0
			for _, path := range args {
				opts := dataset.Options{Name: path, MaxLineBytes: maxLine, OnProblem: func(p dataset.Problem) {
					problems++
					fmt.Fprintln(out, p.String())
				}}
				if err := opts.StreamFile(path, func(dataset.Episode) error { episodes++; return nil }); err != nil {
					var ps *dataset.Problems
					if !errors.As(err, &ps) {
						return err
					}
				}
			}
			if problems > 0 {
				return fmt.Errorf("%d problem(s) in %d file(s); %d valid episode(s)", problems, len(args), episodes)
			}
			fmt.Fprintf(out, "%d episode(s) in %d file(s): valid\n", episodes, len(args))
			return nil
		},
	}
}

func newDatasetStatsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stats FILE...",
		Short: "Print the per-channel shape of episode files beside the published SmartSpot table",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var st dataset.Stats
			for _, path := range args {
				err := dataset.StreamFile(path, func(ep dataset.Episode) error {
					st.Add(&ep)
					return nil
				})
				if err != nil {
					return err
				}
			}
			return st.WriteTable(cmd.OutOrStdout())
		},
	}
}
