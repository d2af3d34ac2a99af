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

package tensorboard

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The protobuf messages of an event file, as TensorBoard declares them
// (tensorboard/compat/proto/event.proto, summary.proto, tensor.proto and
// tensor_shape.proto), reduced to the fields this package writes or reads.
//
//	Event            { double wall_time = 1; int64 step = 2;
//	                   oneof what { string file_version = 3; Summary summary = 5; } }
//	Summary          { repeated Value value = 1; }
//	Summary.Value    { string tag = 1; SummaryMetadata metadata = 9;
//	                   oneof value { float simple_value = 2; TensorProto tensor = 8; } }
//	SummaryMetadata  { PluginData plugin_data = 1; }
//	PluginData       { string plugin_name = 1; bytes content = 2; }
//	TensorProto      { DataType dtype = 1; TensorShapeProto tensor_shape = 2;
//	                   repeated bytes string_val = 8; }
//	TensorShapeProto { repeated Dim dim = 2; }
//	Dim              { int64 size = 1; }
const (
	eventWallTime    protowire.Number = 1
	eventStep        protowire.Number = 2
	eventFileVersion protowire.Number = 3
	eventSummary     protowire.Number = 5

	summaryValue protowire.Number = 1

	valueTag         protowire.Number = 1
	valueSimpleValue protowire.Number = 2
	valueTensor      protowire.Number = 8
	valueMetadata    protowire.Number = 9

	metadataPluginData protowire.Number = 1
	pluginDataName     protowire.Number = 1

	tensorDtype     protowire.Number = 1
	tensorShape     protowire.Number = 2
	tensorStringVal protowire.Number = 8
	shapeDim        protowire.Number = 2
	dimSize         protowire.Number = 1

	// dtString is DataType DT_STRING.
	dtString = 7
)

// fileVersion is the first event of every event file: the version of the format,
// which TensorBoard parses (2: a restart is marked by a SessionLog, which this package
// never writes, so TensorBoard purges nothing).
const fileVersion = "brain.Event:2"

// textPlugin is the plugin_name under which TensorBoard's text dashboard finds a
// tensor of strings.
const textPlugin = "text"

// appendFileVersionEvent appends the encoded Event that opens an event file.
func appendFileVersionEvent(b []byte, wallTime float64) []byte {
	return appendStringField(appendEventHead(b, wallTime, 0), eventFileVersion, fileVersion)
}

// appendEventHead appends an Event's wall_time and step.
func appendEventHead(b []byte, wallTime float64, step int64) []byte {
	b = protowire.AppendTag(b, eventWallTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(wallTime))
	return appendVarintField(b, eventStep, uint64(step))
}

// appendScalarValue appends to a Summary one Value holding value as a simple_value
// (a float: values are rounded to float32, as TensorBoard stores them).
func appendScalarValue(summary []byte, tag string, value float64) []byte {
	size := protowire.SizeTag(valueTag) + protowire.SizeBytes(len(tag)) + protowire.SizeTag(valueSimpleValue) + protowire.SizeFixed32()
	summary = protowire.AppendTag(summary, summaryValue, protowire.BytesType)
	summary = protowire.AppendVarint(summary, uint64(size))
	summary = appendStringField(summary, valueTag, tag)
	summary = protowire.AppendTag(summary, valueSimpleValue, protowire.Fixed32Type)
	return protowire.AppendFixed32(summary, math.Float32bits(float32(value)))
}

// appendTextValue appends to a Summary one Value that TensorBoard's text dashboard
// shows: a tensor of strings with rows rows of len(cells)/rows columns, in row-major
// order, marked with the text plugin (whose content, TextPluginData version 0, is empty).
func appendTextValue(summary []byte, tag string, rows int, cells []string) []byte {
	var shape []byte
	for _, size := range []int{rows, len(cells) / rows} {
		shape = appendMessageField(shape, shapeDim, appendVarintField(nil, dimSize, uint64(size)))
	}
	tensor := appendVarintField(nil, tensorDtype, dtString)
	tensor = appendMessageField(tensor, tensorShape, shape)
	for _, c := range cells {
		tensor = appendStringField(tensor, tensorStringVal, c)
	}
	pluginData := appendStringField(nil, pluginDataName, textPlugin)
	metadata := appendMessageField(nil, metadataPluginData, pluginData)

	value := appendStringField(nil, valueTag, tag)
	value = appendMessageField(value, valueMetadata, metadata)
	value = appendMessageField(value, valueTensor, tensor)
	return appendMessageField(summary, summaryValue, value)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func appendMessageField(b []byte, num protowire.Number, m []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
}

// appendSummaryEvent appends an Event holding summary, the encoded Values of a Summary.
func appendSummaryEvent(b []byte, wallTime float64, step int64, summary []byte) []byte {
	return appendMessageField(appendEventHead(b, wallTime, step), eventSummary, summary)
}

// event is what this package reads of an Event.
type event struct {
	wallTime float64
	step     int64
	scalars  []scalarValue
	texts    []textValue
}

type scalarValue struct {
	tag   string
	value float32
}

// textValue is a Value that the text plugin shows: a tensor of strings.
type textValue struct {
	tag   string
	shape []int64
	cells []string
}

// decodeEvent decodes an Event, skipping the fields and the Values it does not read.
func decodeEvent(b []byte) (event, error) {
	var ev event
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			bits, _ := protowire.ConsumeFixed64(v)
			ev.wallTime = math.Float64frombits(bits)
		case num == eventStep && typ == protowire.VarintType:
			step, _ := protowire.ConsumeVarint(v)
			ev.step = int64(step)
		case num == eventSummary && typ == protowire.BytesType:
			return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
				if num != summaryValue || typ != protowire.BytesType {
					return nil
				}
				return ev.addValue(v)
			})
		}
		return nil
	})
	return ev, err
}

// addValue decodes a Summary.Value and adds it to ev when it is a scalar or a text.
func (ev *event) addValue(b []byte) error {
	var (
		tag       string
		simple    *float32
		plugin    string
		tensor    []byte
		hasTensor bool
	)
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == valueTag && typ == protowire.BytesType:
			tag = string(v)
		case num == valueSimpleValue && typ == protowire.Fixed32Type:
			bits, _ := protowire.ConsumeFixed32(v)
			f := math.Float32frombits(bits)
			simple = &f
		case num == valueTensor && typ == protowire.BytesType:
			tensor, hasTensor = v, true
		case num == valueMetadata && typ == protowire.BytesType:
			var err error
			plugin, err = pluginName(v)
			return err
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case simple != nil:
		ev.scalars = append(ev.scalars, scalarValue{tag: tag, value: *simple})
	case hasTensor && plugin == textPlugin:
		t, err := decodeStringTensor(tensor)
		if err != nil {
			return err
		}
		t.tag = tag
		ev.texts = append(ev.texts, t)
	}
	return nil
}

// pluginName decodes SummaryMetadata's plugin_data.plugin_name.
func pluginName(metadata []byte) (string, error) {
	var name string
	err := eachField(metadata, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != metadataPluginData || typ != protowire.BytesType {
			return nil
		}
		return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			if num == pluginDataName && typ == protowire.BytesType {
				name = string(v)
			}
			return nil
		})
	})
	return name, err
}

// decodeStringTensor decodes a TensorProto of DT_STRING; its shape and cells are
// empty for any other dtype.
func decodeStringTensor(b []byte) (textValue, error) {
	var (
		t     textValue
		dtype uint64
	)
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == tensorDtype && typ == protowire.VarintType:
			dtype, _ = protowire.ConsumeVarint(v)
		case num == tensorStringVal && typ == protowire.BytesType:
			t.cells = append(t.cells, string(v))
		case num == tensorShape && typ == protowire.BytesType:
			return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
				if num != shapeDim || typ != protowire.BytesType {
					return nil
				}
				return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
					if num == dimSize && typ == protowire.VarintType {
						size, _ := protowire.ConsumeVarint(v)
						t.shape = append(t.shape, int64(size))
					}
					return nil
				})
			})
		}
		return nil
	})
	if err != nil || dtype != dtString {
		return textValue{}, err
	}
	return t, nil
}

// eachField calls f with each field of the encoded message m, in order: its number,
// its wire type and its value (a bytes field's content; for the other types, the
// encoded value). It stops at f's first error or at bytes that are not a field.
func eachField(m []byte, f func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return fmt.Errorf("protobuf: %w", protowire.ParseError(n))
		}
		m = m[n:]
		n = protowire.ConsumeFieldValue(num, typ, m)
		if n < 0 {
			return fmt.Errorf("protobuf field %d: %w", num, protowire.ParseError(n))
		}
		v := m[:n]
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(v)
		}
		if err := f(num, typ, v); err != nil {
			return err
		}
		m = m[n:]
	}
	return nil
}
