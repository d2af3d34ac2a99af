# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
