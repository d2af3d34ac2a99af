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
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The layout of a record (see the package doc).
const (
	headerSize   = 8 + 4
	footerSize   = 4
	crcMaskDelta = 0xa282ead8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's checksum of b: the CRC-32C of b, rotated right by 15 bits
// and added to 0xa282ead8 (so that a CRC stored in the checksummed data does not
// checksum trivially).
func maskedCRC(b []byte) uint32 {
	crc := crc32.Checksum(b, castagnoli)
	return (crc>>15 | crc<<17) + crcMaskDelta
}

// appendRecord appends data to b as one TFRecord.
func appendRecord(b, data []byte) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	b = binary.LittleEndian.AppendUint32(b, maskedCRC(b[start:]))
	b = append(b, data...)
	return binary.LittleEndian.AppendUint32(b, maskedCRC(data))
}

// CorruptError is the error of an event file holding a record that fails its checksum
// and is not the file's torn last record: data that a crash does not explain.
type CorruptError struct {
	// File is the event file's path.
	File string
	// Offset is where the record starts in the file.
	Offset int64
	// Reason says what is wrong with the record.
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: corrupt record at offset %d: %s", e.File, e.Offset, e.Reason)
}

// errTorn is recordReader.next's error when the rest of the file is a torn last record.
var errTorn = errors.New("torn last record")

// recordReader reads the records of one TFRecord file of a known size.
type recordReader struct {
	file string
	r    *bufio.Reader
	size int64
	// off is where the next record starts.
	off int64
	buf []byte
}

func newRecordReader(file string, r io.Reader, size int64) *recordReader {
	return &recordReader{file: file, r: bufio.NewReaderSize(r, 64<<10), size: size}
}

// next returns the next record's data, valid until the following call; io.EOF after
// the last record; errTorn when the rest of the file is the last record left
// incomplete by a write that did not finish (too short for its length, a data
// checksum that fails at the end of the file, or bytes that are all zero: a tail the
// file system extended but never filled); a *CorruptError for any other record that
// fails its checksum; or the error of reading the file.
func (rr *recordReader) next() ([]byte, error) {
	left := rr.size - rr.off
	if left == 0 {
		return nil, io.EOF
	}
	if left < headerSize+footerSize {
		return nil, errTorn
	}
	var header [headerSize]byte
	if _, err := io.ReadFull(rr.r, header[:]); err != nil {
		return nil, rr.readError(err)
	}
	if maskedCRC(header[:8]) != binary.LittleEndian.Uint32(header[8:]) {
		return nil, rr.badLength(header[:])
	}
	n := binary.LittleEndian.Uint64(header[:8])
	if n > uint64(left-headerSize-footerSize) {
		return nil, errTorn
	}
	if cap(rr.buf) < int(n)+footerSize {
		rr.buf = make([]byte, int(n)+footerSize)
	}
	rec := rr.buf[:int(n)+footerSize]
	if _, err := io.ReadFull(rr.r, rec); err != nil {
		return nil, rr.readError(err)
	}
	data := rec[:n]
	end := rr.off + headerSize + int64(len(rec))
	if maskedCRC(data) != binary.LittleEndian.Uint32(rec[n:]) {
		if end == rr.size {
			return nil, errTorn
		}
		return nil, rr.corrupt("the data's checksum does not match")
	}
	rr.off = end
	return data, nil
}

// badLength is next's error for a header whose length fails its checksum: errTorn
// when the header and the rest of the file are all zero bytes, else a *CorruptError.
func (rr *recordReader) badLength(header []byte) error {
	zero, err := restIsZero(header, rr.r)
	switch {
	case err != nil:
		return rr.readError(err)
	case zero:
		return errTorn
	}
	return rr.corrupt("the length's checksum does not match")
}

// restIsZero reports whether header and what remains of r are all zero bytes.
func restIsZero(header []byte, r io.Reader) (bool, error) {
	if !isZero(header) {
		return false, nil
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if !isZero(buf[:n]) {
			return false, nil
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// readError is next's error when reading fails: a file that ends early has shrunk
// since it was measured, which reads as a torn last record.
func (rr *recordReader) readError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errTorn
	}
	return fmt.Errorf("reading %s at offset %d: %w", rr.file, rr.off, err)
}

func (rr *recordReader) corrupt(reason string) error {
	return &CorruptError{File: rr.file, Offset: rr.off, Reason: reason}
}
