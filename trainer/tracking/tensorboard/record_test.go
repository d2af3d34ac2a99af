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
	"bytes"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"slices"
	"testing"
)

// The known answers are TensorBoard's own: masked_crc32c of
// tensorboard.summary.writer.record_writer, and the bytes its RecordWriter writes.
func TestMaskedCRCKnownAnswers(t *testing.T) {
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xe3069283 {
		t.Fatalf("CRC-32C check value = %#x, want 0xe3069283", got)
	}
	for data, want := range map[string]uint32{
		"":                                 0xa282ead8,
		"hello":                            0x191c1fbb,
		"123456789":                        0xc78ab0e5,
		"\x05\x00\x00\x00\x00\x00\x00\x00": 0x3e04b2ea, // the length header of "hello"
	} {
		if got := maskedCRC([]byte(data)); got != want {
			t.Errorf("maskedCRC(%q) = %#x, want %#x", data, got, want)
		}
	}
}

func TestAppendRecordWritesWhatTensorBoardsRecordWriterWrites(t *testing.T) {
	const want = "0500000000000000" + "eab2043e" + "68656c6c6f" + "bb1f1c19"
	if got := hex.EncodeToString(appendRecord(nil, []byte("hello"))); got != want {
		t.Errorf("appendRecord(hello) = %s, want %s", got, want)
	}
}

// readAll reads the records of file, returning their data and the error that ended
// the reading (io.EOF at a clean end).
func readAll(file []byte) ([]string, error) {
	rr := newRecordReader("f", bytes.NewReader(file), int64(len(file)))
	var got []string
	for {
		data, err := rr.next()
		if err != nil {
			return got, err
		}
		got = append(got, string(data))
	}
}

func records(data ...string) []byte {
	var b []byte
	for _, d := range data {
		b = appendRecord(b, []byte(d))
	}
	return b
}

func TestRecordsReadBack(t *testing.T) {
	want := []string{"first", "", "third record"}
	got, err := readAll(records(want...))
	if err != io.EOF || !slices.Equal(got, want) {
		t.Errorf("read %q, %v; want %q, EOF", got, err, want)
	}
}

func TestTornLastRecordIsToleratedAndIgnored(t *testing.T) {
	whole := records("first", "second")
	last := appendRecord(nil, []byte("second"))
	firstLen := len(whole) - len(last)
	cases := map[string][]byte{
		"cut in the header":       whole[:firstLen+5],
		"cut in the data":         whole[:firstLen+headerSize+3],
		"cut in the data's CRC":   whole[:len(whole)-1],
		"data not all written":    append(slices.Clone(whole[:len(whole)-footerSize-2]), 0, 0, whole[len(whole)-4], whole[len(whole)-3], whole[len(whole)-2], whole[len(whole)-1]),
		"a tail of zero bytes":    append(slices.Clone(whole[:firstLen]), make([]byte, 40)...),
		"a few zero bytes":        append(slices.Clone(whole[:firstLen]), make([]byte, 3)...),
		"a header of zero length": append(slices.Clone(whole[:firstLen]), make([]byte, headerSize+footerSize)...),
	}
	for name, file := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := readAll(file)
			if !errors.Is(err, errTorn) || !slices.Equal(got, []string{"first"}) {
				t.Errorf("read %q, %v; want [first], a torn last record", got, err)
			}
		})
	}
}

func TestCorruptRecordBeforeTheLastIsRefusedWithItsOffset(t *testing.T) {
	whole := records("first", "second", "third")
	secondAt := int64(len(appendRecord(nil, []byte("first"))))
	cases := map[string]struct {
		at     int64 // the byte flipped
		reason string
	}{
		"data":   {at: secondAt + headerSize + 2, reason: "the data's checksum does not match"},
		"length": {at: secondAt + 1, reason: "the length's checksum does not match"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			file := slices.Clone(whole)
			file[c.at] ^= 0x40
			got, err := readAll(file)
			var corrupt *CorruptError
			if !errors.As(err, &corrupt) || corrupt.Offset != secondAt || corrupt.Reason != c.reason || corrupt.File != "f" {
				t.Fatalf("read %q, %v; want a CorruptError at offset %d: %s", got, err, secondAt, c.reason)
			}
			if !slices.Equal(got, []string{"first"}) {
				t.Errorf("read %q before the corrupt record, want [first]", got)
			}
		})
	}
}
