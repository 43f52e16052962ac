"""The Protobuf writer schemas of the Protobuf tests, as .proto text: v1, one message with a nested
message (the device's place) and a Timestamp event time; v2, the same message now second in its
file (after an envelope), with an optional field added (``firmware``) and ``floor`` widened from
int32 to int64, as a producer's schema evolves between releases."""

from __future__ import annotations

V1 = """syntax = "proto3";
package tidemark.test;
import "google/protobuf/timestamp.proto";

message Telemetry {
  message Place {
    string site = 1;
    int32 floor = 2;
  }
  string device_id = 1;
  google.protobuf.Timestamp event_time = 2;
  Place place = 3;
  int64 battery = 4;
}
"""

V2 = """syntax = "proto3";
package tidemark.test;
import "google/protobuf/timestamp.proto";

message Envelope {
  string producer = 1;
}

message Telemetry {
  message Place {
    string site = 1;
    int64 floor = 2;
  }
  string device_id = 1;
  google.protobuf.Timestamp event_time = 2;
  Place place = 3;
  int64 battery = 4;
  optional string firmware = 5;
}
"""
