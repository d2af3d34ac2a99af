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

package dataset_test

import (
	"fmt"
	"os"

	"github.com/espo-dev/espo-operator/trainer/dataset"
)

func ExampleGenerate() {
	eps, err := dataset.Generate(dataset.GenerateOptions{Channels: []string{"hotel"}, Episodes: 1, Seed: 7})
	if err != nil {
		panic(err)
	}
	ep := eps[0]
	fmt.Println(ep.ID, ep.Channel)
	fmt.Println(ep.Instruction)
	for _, s := range ep.Steps {
		value := s.Answer.InputText
		if s.Answer.Action == "click" { // the element clicked
			for _, e := range s.Screen.Elements {
				if e.ID == s.Answer.Target {
					value = e.Role + " " + e.Text
				}
			}
		}
		if s.Candidate != nil {
			value += " for " + s.Candidate.Name
		}
		fmt.Printf("%2d %-9s %-14s %s\n", s.Index, s.Stage, s.Answer.Action, value)
	}
	// Output:
	// hotel-s7-000000 hotel
	// Work is sending me to London soon and I still have nowhere to stay, any good hotel?
	//  0 gui       click          search_box Search hotels
	//  1 gui       type           London
	//  2 gui       click          button Search
	//  3 gui       scroll         down
	//  4 gui       click          button Room type
	//  5 gui       click          option Sea view
	//  6 gui       click          chip Spa
	//  7 gui       click          chip Under $100
	//  8 gui       click          chip Under $100
	//  9 gui       click          chip $200-350
	// 10 pool      pool_found     I need a hotel for my upcoming trip. I need a place in London, booking a sea view room, priced $200-350 per night, and with spa.
	// 11 recommend recommendation Yes for Maple Inn
	// 12 recommend recommendation Yes for Park Residence
	// 13 recommend recommendation No for Urban Inn
	// 14 recommend recommendation Yes for Silver Inn
	// 15 recommend recommendation Yes for Central Lodge
}

func ExampleStats_WriteTable() {
	var st dataset.Stats
	err := dataset.StreamFile("testdata/valid.jsonl", func(ep dataset.Episode) error {
		st.Add(&ep)
		return nil
	})
	if err != nil {
		panic(err)
	}
	st.WriteTable(os.Stdout)
	// Output:
	// channel  episodes   gui  published  pool  recommend  published  steps  yes  instruction words  requirement words
	//        food         1  3.00       7.00  1.00       2.00        4-7   6.00  50%       18.0 (18-18)       19.0 (19-19)
	//         all         1  3.00          -  1.00       2.00        4-7   6.00  50%       18.0 (18-18)       19.0 (19-19)
	//   published       102                   1.00                        16.79                 (13-24)            (19-55)
}
