package simhost

import "dcpi/wire"

// PublishValues applies a value-sampling record (storage.DB.ApplyValues);
// a redelivered one changes nothing.
func (s LocalSink) PublishValues(r *wire.ValuesRecord) error {
	_, err := s.DB.ApplyValues(r)
	return err
}
